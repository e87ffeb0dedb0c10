variable "name" {
  description = "The security group's name."
  type        = string
}

variable "vpc_id" {
  description = "The VPC the group belongs to."
  type        = string
}

resource "aws_security_group" "internal" {
  name        = var.name
  description = "HTTPS from the private network"
  vpc_id      = var.vpc_id

  ingress {
    description = "HTTPS from the VPC"
    from_port   = 443
    to_port     = 443
    protocol    = "tcp"
    cidr_blocks = ["10.0.0.0/16"]
  }
}

output "id" {
  description = "The group's id."
  value       = aws_security_group.internal.id
}
